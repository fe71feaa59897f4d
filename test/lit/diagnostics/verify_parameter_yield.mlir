builtin.module {
  cf.parameter @slope for ["Relu"] {
    Relu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
      %0 = cf.const 0.0 : !cf.float
      cf.yield %0, %0 : !cf.float, !cf.float
    }
  }
}

// RUN: cd %S && not cf-opt verify_parameter_yield.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_parameter_yield.mlir:2:3: 'cf.parameter' op the domain of @slope for 'Relu' yields (lo, hi, init), got 2 value(s){{$}}
// CHECK-NOT: {{.}}
