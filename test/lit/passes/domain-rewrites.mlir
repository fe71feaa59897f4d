// RUN: cf-opt %s -p domain-rewrites | filecheck %s
// domain-rewrites: every domain rewrite pattern in one greedy walk, to a fixpoint, so that one
// rewrite exposes another.  Here fold-parts (extract(combine(c, k)) -> part) and fold-constants
// (and(m, true) -> m, mult(m, 1) -> m) first peel the packing and the neutral operands off; only then
// do clamp-rewrite (mult(ge(x, 0), x) -> clamp(x, min=0)) and matmul-rewrite
// (reduce(mult(repeat(a), repeat(b))) -> inner(a, b)) match.  No single rewrite pass does all of it.

builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %k = cftensor.input "k" : !cftensor.t<R, [batch, curr], [1, 1]>
    %e = cftensor.combine_poly %c, %k : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
    %x = cftensor.extract_poly_const %e : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %zero = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %true = cftensor.const(1.000000e+00 : f64) : !cftensor.t<const B, [1], [1]>
    %one = cftensor.const(1.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %ge = cftensor.binary "ge" %x, %zero : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %mask = cftensor.binary "and" %ge, %true : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<const B, [1], [1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %pos = cftensor.mult %mask, %x : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %a = cftensor.input "a" : !cftensor.t<R, [curr, poly, 1], [1, 1, poly]>
    %bc = cftensor.input "bc" : !cftensor.t<R, [1, poly, poly], [curr, 1, 1]>
    %bk = cftensor.input "bk" : !cftensor.t<R, [1, poly], [curr, 1]>
    %be = cftensor.combine_poly %bc, %bk : (!cftensor.t<R, [1, poly, poly], [curr, 1, 1]>, !cftensor.t<R, [1, poly], [curr, 1]>) -> !cftensor.t<P, [1, poly], [curr, 1]>
    %b = cftensor.extract_poly_coeff %be : (!cftensor.t<P, [1, poly], [curr, 1]>) -> !cftensor.t<R, [1, poly, poly], [curr, 1, 1]>
    %ra = cftensor.repeat %a[2] size "poly" : (!cftensor.t<R, [curr, poly, 1], [1, 1, poly]>) -> !cftensor.t<R, [curr, poly, poly], [1, 1, 1]>
    %rb = cftensor.repeat %b[0] size "curr" : (!cftensor.t<R, [1, poly, poly], [curr, 1, 1]>) -> !cftensor.t<R, [curr, poly, poly], [1, 1, 1]>
    %m = cftensor.mult %ra, %rb : (!cftensor.t<R, [curr, poly, poly], [1, 1, 1]>, !cftensor.t<R, [curr, poly, poly], [1, 1, 1]>) -> !cftensor.t<R, [curr, poly, poly], [1, 1, 1]>
    %m1 = cftensor.mult %m, %one : (!cftensor.t<R, [curr, poly, poly], [1, 1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [curr, poly, poly], [1, 1, 1]>
    %r = cftensor.reduce %m1[1] kind "sum" : (!cftensor.t<R, [curr, poly, poly], [1, 1, 1]>) -> !cftensor.t<R, [curr, poly], [1, 1]>
    cftensor.return %pos, %r : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [curr, poly], [1, 1]>
  }
}

// CHECK:      %[[K:.*]] = cftensor.input "k"
// CHECK-NOT:  cftensor.combine_poly
// CHECK-NOT:  cftensor.extract_poly
// CHECK-NOT:  cftensor.mult
// CHECK:      %[[POS:.*]] = cftensor.clamp %[[K]] min(0.000000e+00 : f64) : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
// CHECK-NEXT: %[[A:.*]] = cftensor.input "a"
// CHECK-NEXT: %[[BC:.*]] = cftensor.input "bc"
// CHECK-NOT:  cftensor.combine_poly
// CHECK-NOT:  cftensor.extract_poly
// CHECK-NOT:  cftensor.repeat
// CHECK-NOT:  cftensor.mult
// CHECK-NOT:  cftensor.reduce
// CHECK:      %[[R:.*]] = cftensor.inner %[[A]], %[[BC]][1] : (!cftensor.t<R, [curr, poly, 1], [1, 1, poly]>, !cftensor.t<R, [1, poly, poly], [curr, 1, 1]>) -> !cftensor.t<R, [curr, poly], [1, 1]>
// CHECK-NEXT: cftensor.return %[[POS]], %[[R]] :
