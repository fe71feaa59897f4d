builtin.module {
  cf.shape (l : !cf.float, u : !cf.float) constraints(%curr: !cf.neuron) {
    %0 = cf.access %curr["l"] : (!cf.neuron) -> !cf.float
    %1 = cf.le %0, %curr : (!cf.float, !cf.neuron) -> !cf.ct
    cf.yield %1 : !cf.ct
  }
  cf.transformer @t {
    Relu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
      %0 = cf.access %prev["l"] : (!cf.neuron) -> !cf.float
      cf.return %0 : !cf.float
    }
  }
}

// RUN: cd %S && not cf-opt verify_return_arity.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_return_arity.mlir:10:7: 'cf.return' op rule 'Relu' returns 1 value but the shape has 2 members{{$}}
// CHECK-NOT: {{.}}
