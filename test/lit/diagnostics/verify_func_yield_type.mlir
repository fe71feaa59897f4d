builtin.module {
  cf.func @f(%x: !cf.int) -> !cf.float {
    cf.yield %x : !cf.int
  }
}

// RUN: cd %S && not cf-opt verify_func_yield_type.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_func_yield_type.mlir:2:3: 'cf.func' op @f yields !cf.int but its result type is !cf.float{{$}}
// CHECK-NOT: {{.}}
