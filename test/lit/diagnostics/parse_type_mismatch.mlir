builtin.module {
  cf.func @f(%x: !cf.float) -> !cf.float {
    %0 = cf.neg %x : (!cf.int) -> !cf.int
    cf.yield %0 : !cf.int
  }
}

// RUN: cd %S && not cf-opt parse_type_mismatch.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: parse_type_mismatch.mlir:3:17: operand is used with type !cf.int, but has been previously used or defined with type !cf.float{{$}}
// CHECK-NOT: {{.}}
