// RUN: cf-opt %s -p fold-parts | filecheck %s
// fold-parts: copy propagation through PolyExp/SymExp packing.  Reading a part of a value that was
// just packed is the part itself:
//   extract_poly_coeff(combine_poly(c, k)) -> c     extract_poly_const(combine_poly(c, k)) -> k
//   extract_sym_coeff(combine_sym(c, k))   -> c     extract_sym_const(combine_sym(c, k))   -> k
// (the packing, now dead, goes too).  Kept: an extract of a value that was not packed here (a rule
// input), and one whose part has another type than the extract's result (the constant was a
// compile-time scalar, so the packed constant is broadcast).

builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %k = cftensor.input "k" : !cftensor.t<R, [batch, curr], [1, 1]>
    %sc = cftensor.input "sc" : !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
    %sk = cftensor.input "sk" : !cftensor.t<R, [batch, curr], [1, 1]>
    %e = cftensor.input "e" : !cftensor.t<P, [batch, curr], [1, 1]>
    %p = cftensor.combine_poly %c, %k : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
    %pc = cftensor.extract_poly_coeff %p : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %pk = cftensor.extract_poly_const %p : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %z = cftensor.combine_sym %sc, %sk : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
    %zc = cftensor.extract_sym_coeff %z : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
    %zk = cftensor.extract_sym_const %z : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %ec = cftensor.extract_poly_coeff %e : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %zero = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %q = cftensor.combine_poly %c, %zero : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
    %qk = cftensor.extract_poly_const %q : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %pc, %pk, %zc, %zk, %ec, %qk : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[C:.*]] = cftensor.input "c"
// CHECK-NEXT: %[[K:.*]] = cftensor.input "k"
// CHECK-NEXT: %[[SC:.*]] = cftensor.input "sc"
// CHECK-NEXT: %[[SK:.*]] = cftensor.input "sk"
// CHECK-NEXT: %[[E:.*]] = cftensor.input "e"
// CHECK-NOT:  cftensor.combine_poly %[[C]], %[[K]]
// CHECK-NOT:  cftensor.combine_sym
// CHECK-NOT:  cftensor.extract_sym
// CHECK:      %[[EC:.*]] = cftensor.extract_poly_coeff %[[E]]
// CHECK-NEXT: %[[ZERO:.*]] = cftensor.const(0.000000e+00 : f64)
// CHECK-NEXT: %[[Q:.*]] = cftensor.combine_poly %[[C]], %[[ZERO]]
// CHECK-NEXT: %[[QK:.*]] = cftensor.extract_poly_const %[[Q]]
// CHECK-NEXT: cftensor.return %[[C]], %[[K]], %[[SC]], %[[SK]], %[[EC]], %[[QK]] :
