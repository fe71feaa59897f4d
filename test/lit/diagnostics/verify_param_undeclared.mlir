builtin.module {
  cf.func @f(%n: !cf.neuron) -> !cf.float {
    %0 = cf.param %n["slope"] : (!cf.neuron) -> !cf.float
    cf.yield %0 : !cf.float
  }
}

// RUN: cd %S && not cf-opt verify_param_undeclared.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_param_undeclared.mlir:3:5: 'cf.param' op 'slope' is not a parameter (no 'cf.parameter @slope' in the module){{$}}
// CHECK-NOT: {{.}}
