builtin.module {
  cf.func @f(%a: !cf.neuron, %b: !cf.polyexp) -> !cf.polyexp {
    %0 = cf.mul %a, %b : (!cf.neuron, !cf.polyexp) -> !cf.polyexp
    cf.yield %0 : !cf.polyexp
  }
}

// RUN: cd %S && not cf-opt verify_mul_not_linear.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_mul_not_linear.mlir:3:5: 'cf.mul' op operator '*' needs a scalar operand, got Neuron and PolyExp (the product would not be linear){{$}}
// CHECK-NOT: {{.}}
