builtin.module {
  cf.func @f(%x: !cf.float) -> !cf.float {
    cf.br ^bb1
  }
}

// RUN: cd %S && not cf-opt parse_xdsl_cf_op.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: parse_xdsl_cf_op.mlir:3:11: Operation cf.br is not registered{{$}}
// CHECK-NOT: {{.}}
