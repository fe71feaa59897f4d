builtin.module {
  cf.func @f(%x: !cf.float) -> !cf.float {
    %0 = cf.call @nope(%x) : (!cf.float) -> !cf.float
    cf.yield %0 : !cf.float
  }
}

// RUN: cd %S && not cf-opt verify_unknown_callee.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_unknown_callee.mlir:3:5: 'cf.call' op refers to unknown function @nope{{$}}
// CHECK-NOT: {{.}}
