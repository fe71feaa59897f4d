// RUN: cf-opt %s -p cftensor-licm | filecheck %s
// cftensor-licm: loop-invariant code motion out of cftensor.while.  An op directly in the before or
// after block that is Pure, has no regions and whose operands are all defined outside the loop moves
// in front of the loop, repeatedly (so chains of invariant ops move together).  Kept inside: ops that
// read the loop-carried value, cftensor.sym (not Pure: one fresh noise symbol per evaluation) and
// ops with regions (cftensor.if), even when everything they read is invariant.

builtin.module {
  cftensor.rule "t" "Affine" {
    %e0 = cftensor.input "e" : !cftensor.t<P, [batch, curr], [1, 1]>
    %w = cftensor.input "w" : !cftensor.t<R, [batch, curr], [1, 1]>
    %u = cftensor.input "u" : !cftensor.t<B, [1, 1], [batch, curr]>
    %r = cftensor.while(%e0) : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]> before {
    ^bb0(%e: !cftensor.t<P, [batch, curr], [1, 1]>):
      %zero = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
      %c = cftensor.map_coeff %e : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>
      %nz = cftensor.binary "ne" %c, %zero : (!cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [poly], [1] :: R, [batch, curr], [1, 1]>
      %any = cftensor.any %nz : (!cftensor.t<B, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<B, [1], [1]>
      cftensor.return %any, %e : !cftensor.t<B, [1], [1]>, !cftensor.t<P, [batch, curr], [1, 1]>
    } after {
    ^bb1(%e1: !cftensor.t<P, [batch, curr], [1, 1]>):
      %neg = cftensor.unary "neg" %w : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
      %abs = cftensor.unary "abs" %neg : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
      %eps = cftensor.sym : !cftensor.t<E, [1, curr], [batch, 1]>
      %sel = cftensor.if %u : (!cftensor.t<B, [1, 1], [batch, curr]>) -> (!cftensor.t<R, [batch, curr], [1, 1]>) then {
        cftensor.return %w : !cftensor.t<R, [batch, curr], [1, 1]>
      } else {
        cftensor.return %abs : !cftensor.t<R, [batch, curr], [1, 1]>
      }
      %k = cftensor.extract_poly_const %e1 : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
      %cf = cftensor.extract_poly_coeff %e1 : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
      %k2 = cftensor.binary "add" %k, %sel : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
      %n = cftensor.combine_poly %cf, %k2 : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
      cftensor.return %n : !cftensor.t<P, [batch, curr], [1, 1]>
    }
    cftensor.return %r : !cftensor.t<P, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[W:.*]] = cftensor.input "w"
// CHECK-NEXT: %[[U:.*]] = cftensor.input "u"
// CHECK-NEXT: %[[ZERO:.*]] = cftensor.const(0.000000e+00 : f64)
// CHECK-NEXT: %[[NEG:.*]] = cftensor.unary "neg" %[[W]]
// CHECK-NEXT: %[[ABS:.*]] = cftensor.unary "abs" %[[NEG]]
// CHECK-NEXT: %{{.*}} = cftensor.while(%{{.*}}) : {{.*}} before {
// CHECK-NEXT: ^{{.*}}(%[[E:.*]]: !cftensor.t<P, [batch, curr], [1, 1]>):
// CHECK-NEXT:   %[[C:.*]] = cftensor.map_coeff %[[E]]
// CHECK-NEXT:   %[[NZ:.*]] = cftensor.binary "ne" %[[C]], %[[ZERO]]
// CHECK-NEXT:   %[[ANY:.*]] = cftensor.any %[[NZ]]
// CHECK-NEXT:   cftensor.return %[[ANY]], %[[E]]
// CHECK-NEXT: } after {
// CHECK-NEXT: ^{{.*}}(%[[E1:.*]]: !cftensor.t<P, [batch, curr], [1, 1]>):
// CHECK-NEXT:   %{{.*}} = cftensor.sym
// CHECK-NEXT:   %[[SEL:.*]] = cftensor.if %[[U]]
// CHECK-NEXT:     cftensor.return %[[W]]
// CHECK-NEXT:   } else {
// CHECK-NEXT:     cftensor.return %[[ABS]]
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[K:.*]] = cftensor.extract_poly_const %[[E1]]
// CHECK-NEXT:   %[[CF:.*]] = cftensor.extract_poly_coeff %[[E1]]
// CHECK-NEXT:   %[[K2:.*]] = cftensor.binary "add" %[[K]], %[[SEL]]
// CHECK-NEXT:   %[[N:.*]] = cftensor.combine_poly %[[CF]], %[[K2]]
// CHECK-NEXT:   cftensor.return %[[N]]
// CHECK-NEXT: }
