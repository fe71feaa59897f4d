builtin.module {
  cf.parameter @slope for ["Relu"] {
    Relu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
      %0 = cf.const 0.0 : !cf.float
      %1 = cf.const true : !cf.bool
      cf.yield %0, %1, %0 : !cf.float, !cf.bool, !cf.float
    }
  }
}

// RUN: cd %S && not cf-opt verify_parameter_bound_type.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_parameter_bound_type.mlir:2:3: 'cf.parameter' op the upper bound of a parameter must be a Float, got Bool{{$}}
// CHECK-NOT: {{.}}
