// RUN: cf-opt %s -p nonzero-mask | filecheck %s
// mult(and(ne(c, 0), y), c) -> mult(y, c);  mult(not(and(ne(c, 0), y)), c) -> mult(not(y), c);
// any(ne(c, 0)) -> any(c).  A non-zero test of another value is kept.

builtin.module {
  cftensor.rule "t" "Relu" {
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr], [1, 1]>
    %d = cftensor.input "d" : !cftensor.t<R, [batch, curr], [1, 1]>
    %y = cftensor.input "y" : !cftensor.t<B, [batch, curr], [1, 1]>
    %z = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %nz = cftensor.binary "ne" %c, %z : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %sel = cftensor.binary "and" %nz, %y : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %kept = cftensor.unary "not" %sel : (!cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %r1 = cftensor.mult %sel, %c : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %r2 = cftensor.mult %c, %kept : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %r3 = cftensor.mult %sel, %d : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %any = cftensor.any %nz : (!cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [1], [1]>
    cftensor.return %r1, %r2, %r3, %any : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<B, [1], [1]>
  }
}

// CHECK:      %[[C:.*]] = cftensor.input "c"
// CHECK-NEXT: %[[D:.*]] = cftensor.input "d"
// CHECK-NEXT: %[[Y:.*]] = cftensor.input "y"
// CHECK:      %[[SEL:.*]] = cftensor.binary "and" %{{.*}}, %[[Y]]
// CHECK:      %[[R1:.*]] = cftensor.mult %[[Y]], %[[C]]
// CHECK-NEXT: %[[NY:.*]] = cftensor.unary "not" %[[Y]]
// CHECK-NEXT: %[[R2:.*]] = cftensor.mult %[[C]], %[[NY]]
// The mask of another value keeps its test:
// CHECK-NEXT: %[[R3:.*]] = cftensor.mult %[[SEL]], %[[D]]
// CHECK-NEXT: %[[ANY:.*]] = cftensor.any %[[C]]
// CHECK-NEXT: cftensor.return %[[R1]], %[[R2]], %[[R3]], %[[ANY]]
