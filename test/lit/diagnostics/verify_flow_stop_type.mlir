builtin.module {
  cf.shape (l : !cf.float, u : !cf.float) constraints(%curr: !cf.neuron) {
    %0 = cf.access %curr["l"] : (!cf.neuron) -> !cf.float
    %1 = cf.le %0, %curr : (!cf.float, !cf.neuron) -> !cf.ct
    cf.yield %1 : !cf.ct
  }
  cf.func @p(%n: !cf.neuron) -> !cf.int {
    %0 = cf.access %n["layer"] : (!cf.neuron) -> !cf.int
    cf.yield %0 : !cf.int
  }
  cf.transformer @t {
  }
  cf.flow forward @p, @p, @t
}

// RUN: cd %S && not cf-opt verify_flow_stop_type.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_flow_stop_type.mlir:13:3: 'cf.flow' op flow stop function @p must have type (Neuron) -> Bool, got (Neuron) -> Int{{$}}
// CHECK-NOT: {{.}}
