builtin.module {
  cf.func @f(%x: !cf.float) -> !cf.float {
    %0 = cf.add %x, %x : (!cf.float, !cf.float) -> !cf.int
    cf.yield %x : !cf.float
  }
}

// RUN: cd %S && not cf-opt verify_result_type.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_result_type.mlir:3:5: 'cf.add' op result type must be !cf.float (Float), got !cf.int{{$}}
// CHECK-NOT: {{.}}
