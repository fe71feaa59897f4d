// cf.parameter (a parameter's domain per operator) and cf.param (a read): print -> parse -> print is the
// identity, the printed form is the expected one, and the generic form parses back to the same module.
// RUN: cf-opt %s | filecheck %s
// RUN: cf-opt %s > %t.first.mlir && cf-opt %t.first.mlir > %t.second.mlir && diff %t.first.mlir %t.second.mlir
// RUN: cf-opt %s --print-op-generic | cf-opt > %t.generic.mlir && diff %t.first.mlir %t.generic.mlir

builtin.module {
  cf.shape (l : !cf.float, u : !cf.float) constraints(%curr: !cf.neuron) {
    %0 = cf.access %curr["l"] : (!cf.neuron) -> !cf.float
    %1 = cf.le %0, %curr : (!cf.float, !cf.neuron) -> !cf.ct
    cf.yield %1 : !cf.ct
  }
  cf.parameter @slope for ["Relu", "LeakyRelu"] else 1.0 {
    Relu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
      %0 = cf.access %prev["l"] : (!cf.neuron) -> !cf.float
      %1 = cf.const 0.0 : !cf.float
      %2 = cf.ge %0, %1 : (!cf.float, !cf.float) -> !cf.bool
      %3 = cf.const 1.0 : !cf.float
      %4 = cf.select %2, %3, %1 : (!cf.bool, !cf.float, !cf.float) -> !cf.float
      cf.yield %4, %3, %3 : !cf.float, !cf.float, !cf.float
    }
    LeakyRelu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
      %0 = cf.access %curr["alpha"] : (!cf.neuron) -> !cf.float
      %1 = cf.const 1.0 : !cf.float
      cf.yield %0, %1, %1 : !cf.float, !cf.float, !cf.float
    }
  }
  cf.parameter @t for ["Sigmoid"] {
    Sigmoid(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
      %0 = cf.access %prev["l"] : (!cf.neuron) -> !cf.float
      %1 = cf.access %prev["u"] : (!cf.neuron) -> !cf.float
      cf.yield %0, %1, %0 : !cf.float, !cf.float, !cf.float
    }
  }
  cf.func @scaled(%n: !cf.neuron, %c: !cf.float) -> !cf.float {
    %0 = cf.param %n["slope"] : (!cf.neuron) -> !cf.float
    %1 = cf.mul %c, %0 : (!cf.float, !cf.float) -> !cf.float
    cf.yield %1 : !cf.float
  }
  cf.func @all(%ns: !cf.list<!cf.neuron>) -> !cf.list<!cf.float> {
    %0 = cf.param %ns["t"] : (!cf.list<!cf.neuron>) -> !cf.list<!cf.float>
    cf.yield %0 : !cf.list<!cf.float>
  }
}

// CHECK:      cf.parameter @slope for ["Relu", "LeakyRelu"] else 1.0 {
// CHECK-NEXT:   Relu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
// CHECK:          cf.yield %4, %3, %3 : !cf.float, !cf.float, !cf.float
// CHECK:        LeakyRelu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
// CHECK:      cf.parameter @t for ["Sigmoid"] {
// CHECK:        %0 = cf.param %n["slope"] : (!cf.neuron) -> !cf.float
// CHECK:        %0 = cf.param %ns["t"] : (!cf.list<!cf.neuron>) -> !cf.list<!cf.float>
