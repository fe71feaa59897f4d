builtin.module {
  cf.func @f(%x: !cf.float) -> !cf.float {
    %0 = cf.frobnicate %x : (!cf.float) -> !cf.float
    cf.yield %0 : !cf.float
  }
}

// RUN: cd %S && not cf-opt parse_unknown_op.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: parse_unknown_op.mlir:3:24: Operation cf.frobnicate is not registered{{$}}
// CHECK-NOT: {{.}}
