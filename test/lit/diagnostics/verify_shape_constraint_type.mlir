builtin.module {
  cf.shape (l : !cf.float) constraints(%curr: !cf.neuron) {
    %0 = cf.access %curr["l"] : (!cf.neuron) -> !cf.float
    cf.yield %0 : !cf.float
  }
}

// RUN: cd %S && not cf-opt verify_shape_constraint_type.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_shape_constraint_type.mlir:2:3: 'cf.shape' op a shape constraint must be a constraint (Ct), got Float (constraint 0){{$}}
// CHECK-NOT: {{.}}
