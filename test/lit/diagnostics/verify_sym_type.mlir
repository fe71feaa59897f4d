builtin.module {
  cf.func @f() -> !cf.float {
    %0 = "cf.sym"() : () -> !cf.float
    %1 = cf.const 1.0 : !cf.float
    cf.yield %1 : !cf.float
  }
}

// RUN: cd %S && not cf-opt verify_sym_type.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_sym_type.mlir:3:5: 'cf.sym' op result 'res' at position 0 does not verify: !cf.float should be of base attribute cf.noise{{$}}
// CHECK-NOT: {{.}}
