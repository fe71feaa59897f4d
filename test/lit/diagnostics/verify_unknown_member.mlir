builtin.module {
  cf.shape (l : !cf.float, u : !cf.float) constraints(%curr: !cf.neuron) {
    %0 = cf.access %curr["l"] : (!cf.neuron) -> !cf.float
    %1 = cf.le %0, %curr : (!cf.float, !cf.neuron) -> !cf.ct
    cf.yield %1 : !cf.ct
  }
  cf.func @f(%n: !cf.neuron) -> !cf.float {
    %0 = cf.access %n["q"] : (!cf.neuron) -> !cf.float
    cf.yield %0 : !cf.float
  }
}

// RUN: cd %S && not cf-opt verify_unknown_member.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_unknown_member.mlir:8:5: 'cf.access' op unknown shape member or metadata 'q'{{$}}
// CHECK-NOT: {{.}}
