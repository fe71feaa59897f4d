builtin.module {
  cf.shape (l : !cf.float, u : !cf.float) constraints(%curr: !cf.neuron) {
    %0 = cf.access %curr["l"] : (!cf.neuron) -> !cf.float
    %1 = cf.le %0, %curr : (!cf.float, !cf.neuron) -> !cf.ct
    cf.yield %1 : !cf.ct
  }
  cf.transformer @t {
    Relu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.list<!cf.neuron>) {
      %0 = cf.access %prev["l"] : (!cf.list<!cf.neuron>) -> !cf.list<!cf.float>
      %1 = cf.sum %0 : (!cf.list<!cf.float>) -> !cf.float
      cf.return %1, %1 : !cf.float, !cf.float
    }
  }
}

// RUN: cd %S && not cf-opt verify_rule_arguments.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_rule_arguments.mlir:7:3: 'cf.transformer' op rule 'Relu' must take the arguments (%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron){{$}}
// CHECK-NOT: {{.}}
