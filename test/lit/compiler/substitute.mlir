// RUN: cf-opt %s -p substitute,dce | filecheck %s
// combine_poly(split_inner(add_dim(c), coeff(L), coeff(U)), split_inner(c, const(L), const(U))) ->
// substitute(c, L, U): one back-substitution step.  Parts of different polyhedra (L's coefficients
// with U's constant) are no substitution and are kept.

builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>
    %l = cftensor.input "l" : !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>
    %u = cftensor.input "u" : !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>
    %lc = cftensor.extract_poly_coeff %l : (!cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [lay, poly], [1, 1] :: P, [batch, 1], [1, curr]>
    %lk = cftensor.extract_poly_const %l : (!cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [lay], [1] :: P, [batch, 1], [1, curr]>
    %uc = cftensor.extract_poly_coeff %u : (!cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [lay, poly], [1, 1] :: P, [batch, 1], [1, curr]>
    %uk = cftensor.extract_poly_const %u : (!cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [lay], [1] :: P, [batch, 1], [1, curr]>
    %x = cftensor.add_dim %c[3] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [lay, 1], [1, poly] :: R, [batch, curr], [1, 1]>
    %sc = cftensor.split_inner %x, %lc, %uc[2] : (!cftensor.t<R, [lay, 1], [1, poly] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [lay, poly], [1, 1] :: P, [batch, 1], [1, curr]>, !cftensor.t<R, [lay, poly], [1, 1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %sk = cftensor.split_inner %c, %lk, %uk[2] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [lay], [1] :: P, [batch, 1], [1, curr]>, !cftensor.t<R, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %r = cftensor.combine_poly %sc, %sk : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
    %mixed = cftensor.split_inner %c, %uk, %lk[2] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [lay], [1] :: P, [batch, 1], [1, curr]>, !cftensor.t<R, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %kept = cftensor.combine_poly %sc, %mixed : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
    cftensor.return %r, %kept : !cftensor.t<P, [batch, curr], [1, 1]>, !cftensor.t<P, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[C:.*]] = cftensor.input "c"
// CHECK-NEXT: %[[L:.*]] = cftensor.input "l"
// CHECK-NEXT: %[[U:.*]] = cftensor.input "u"
// CHECK:      %[[R:.*]] = cftensor.substitute %[[C]], %[[L]], %[[U]][2] : ({{.*}}) -> !cftensor.t<P, [batch, curr], [1, 1]>
// CHECK:      %[[KEPT:.*]] = cftensor.combine_poly %{{.*}}, %{{.*}}
// CHECK-NEXT: cftensor.return %[[R]], %[[KEPT]]
