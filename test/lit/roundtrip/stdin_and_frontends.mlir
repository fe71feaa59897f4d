// cf-opt reads cf IR from stdin ("-"), ConstraintFlow from stdin with -f cf, writes -o, and the
// output of one run is valid input of the next.
// RUN: cf-opt - < %s | filecheck %s
// RUN: cf-opt %s -o %t.out.mlir && filecheck %s --input-file %t.out.mlir
// RUN: cf-opt -f cf - < %certifiers/ibp.cf | filecheck %s --check-prefix=IBP
// RUN: cf-opt --certifier ibp > %t.ibp.mlir && cf-opt -f cf - < %certifiers/ibp.cf > %t.ibp2.mlir && diff %t.ibp.mlir %t.ibp2.mlir

builtin.module {
  cf.shape (l : !cf.float) constraints(%curr: !cf.neuron) {
    %0 = cf.access %curr["l"] : (!cf.neuron) -> !cf.float
    %1 = cf.le %0, %curr : (!cf.float, !cf.neuron) -> !cf.ct
    cf.yield %1 : !cf.ct
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   cf.shape (l : !cf.float) constraints(%curr: !cf.neuron) {
// CHECK-NEXT:     %0 = cf.access %curr["l"] : (!cf.neuron) -> !cf.float
// CHECK-NEXT:     %1 = cf.le %0, %curr : (!cf.float, !cf.neuron) -> !cf.ct
// CHECK-NEXT:     cf.yield %1 : !cf.ct
// CHECK-NEXT:   }
// CHECK-NEXT: }

// IBP: cf.transformer @ibp {
// IBP: cf.flow forward @priority, @stop, @ibp
