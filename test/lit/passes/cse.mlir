// RUN: cf-opt %s -p cse | filecheck %s
// cse (xDSL's common subexpression elimination) on cftensor IR: Pure cftensor ops with the same
// operands, properties and result type are one value, also when the second one sits in a region
// (cftensor.if) that the first dominates.  Kept apart: ops that differ in a property ("add" vs
// "sub", another member), in the result type, and cftensor.sym, which is not Pure (each one is a
// fresh noise symbol).

builtin.module {
  cftensor.rule "t" "Affine" {
    %prev = cftensor.input "prev" : !cftensor.t<N, [1, 1, prev], [batch, curr, 1]>
    %prev2 = cftensor.input "prev" : !cftensor.t<N, [1, 1, prev], [batch, curr, 1]>
    %u = cftensor.input "u" : !cftensor.t<B, [1, 1], [batch, curr]>
    %z1 = cftensor.access "Z" %prev : (!cftensor.t<N, [1, 1, prev], [batch, curr, 1]>) -> !cftensor.t<S, [batch, 1, prev], [1, curr, 1]>
    %z2 = cftensor.access "Z" %prev2 : (!cftensor.t<N, [1, 1, prev], [batch, curr, 1]>) -> !cftensor.t<S, [batch, 1, prev], [1, curr, 1]>
    %l = cftensor.access "l" %prev : (!cftensor.t<N, [1, 1, prev], [batch, curr, 1]>) -> !cftensor.t<R, [batch, 1, prev], [1, curr, 1]>
    %zero1 = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %zero2 = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %false = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const B, [1], [1]>
    %k1 = cftensor.extract_sym_const %z1 : (!cftensor.t<S, [batch, 1, prev], [1, curr, 1]>) -> !cftensor.t<R, [batch, 1, prev], [1, curr, 1]>
    %k2 = cftensor.extract_sym_const %z2 : (!cftensor.t<S, [batch, 1, prev], [1, curr, 1]>) -> !cftensor.t<R, [batch, 1, prev], [1, curr, 1]>
    %s1 = cftensor.binary "add" %k1, %zero1 : (!cftensor.t<R, [batch, 1, prev], [1, curr, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, 1, prev], [1, curr, 1]>
    %s2 = cftensor.binary "add" %k2, %zero2 : (!cftensor.t<R, [batch, 1, prev], [1, curr, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, 1, prev], [1, curr, 1]>
    %d = cftensor.binary "sub" %k2, %zero2 : (!cftensor.t<R, [batch, 1, prev], [1, curr, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, 1, prev], [1, curr, 1]>
    %eps1 = cftensor.sym : !cftensor.t<E, [1, curr], [batch, 1]>
    %eps2 = cftensor.sym : !cftensor.t<E, [1, curr], [batch, 1]>
    %sel = cftensor.if %u : (!cftensor.t<B, [1, 1], [batch, curr]>) -> !cftensor.t<R, [batch, 1, prev], [1, curr, 1]> then {
      %s3 = cftensor.binary "add" %k1, %zero1 : (!cftensor.t<R, [batch, 1, prev], [1, curr, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, 1, prev], [1, curr, 1]>
      cftensor.return %s3 : !cftensor.t<R, [batch, 1, prev], [1, curr, 1]>
    } else {
      cftensor.return %l : !cftensor.t<R, [batch, 1, prev], [1, curr, 1]>
    }
    cftensor.return %s1, %s2, %d, %eps1, %eps2, %sel, %false : !cftensor.t<R, [batch, 1, prev], [1, curr, 1]>, !cftensor.t<R, [batch, 1, prev], [1, curr, 1]>, !cftensor.t<R, [batch, 1, prev], [1, curr, 1]>, !cftensor.t<E, [1, curr], [batch, 1]>, !cftensor.t<E, [1, curr], [batch, 1]>, !cftensor.t<R, [batch, 1, prev], [1, curr, 1]>, !cftensor.t<const B, [1], [1]>
  }
}

// CHECK:      %[[PREV:.*]] = cftensor.input "prev"
// CHECK-NEXT: %[[U:.*]] = cftensor.input "u"
// CHECK-NEXT: %[[Z:.*]] = cftensor.access "Z" %[[PREV]]
// CHECK-NEXT: %[[L:.*]] = cftensor.access "l" %[[PREV]]
// CHECK-NEXT: %[[ZERO:.*]] = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
// CHECK-NEXT: %[[FALSE:.*]] = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const B, [1], [1]>
// CHECK-NEXT: %[[K:.*]] = cftensor.extract_sym_const %[[Z]]
// CHECK-NEXT: %[[S:.*]] = cftensor.binary "add" %[[K]], %[[ZERO]]
// CHECK-NEXT: %[[D:.*]] = cftensor.binary "sub" %[[K]], %[[ZERO]]
// CHECK-NEXT: %[[EPS1:.*]] = cftensor.sym
// CHECK-NEXT: %[[EPS2:.*]] = cftensor.sym
// CHECK-NEXT: %[[SEL:.*]] = cftensor.if %[[U]]
// CHECK-NEXT:   cftensor.return %[[S]]
// CHECK-NEXT: } else {
// CHECK-NEXT:   cftensor.return %[[L]]
// CHECK-NEXT: }
// CHECK-NEXT: cftensor.return %[[S]], %[[S]], %[[D]], %[[EPS1]], %[[EPS2]], %[[SEL]], %[[FALSE]] :
