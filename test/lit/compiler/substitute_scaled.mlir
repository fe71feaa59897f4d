// RUN: cf-opt %s -p substitute,dce | filecheck %s
// combine_poly(inner(add_dim(clamp(c, min=0) * a), coeff(L)) + inner(add_dim(clamp(c, max=0)), coeff(U)),
//              inner(clamp(c, min=0) * a, const(L)) + inner(clamp(c, max=0), const(U)))
//   -> substitute_scaled(c, a, 1, L, U): alpha-CROWN's back-substitution step, the slope scaling the
// positive side.  Sides of different polyhedra (the constant part reading U where the coefficient part
// reads L) are no substitution and are kept.

builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>
    %a = cftensor.input "a" : !cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>
    %l = cftensor.input "l" : !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>
    %u = cftensor.input "u" : !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>
    %lc = cftensor.extract_poly_coeff %l : (!cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [lay, poly], [1, 1] :: P, [batch, 1], [1, curr]>
    %lk = cftensor.extract_poly_const %l : (!cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [lay], [1] :: P, [batch, 1], [1, curr]>
    %uc = cftensor.extract_poly_coeff %u : (!cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [lay, poly], [1, 1] :: P, [batch, 1], [1, curr]>
    %uk = cftensor.extract_poly_const %u : (!cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [lay], [1] :: P, [batch, 1], [1, curr]>
    %cp = cftensor.clamp %c min(0.000000e+00 : f64) : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>
    %p = cftensor.mult %cp, %a : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>
    %n = cftensor.clamp %c max(0.000000e+00 : f64) : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>
    %px = cftensor.add_dim %p[3] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [lay, 1], [1, poly] :: R, [batch, curr], [1, 1]>
    %nx = cftensor.add_dim %n[3] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [lay, 1], [1, poly] :: R, [batch, curr], [1, 1]>
    %ic1 = cftensor.inner %px, %lc[2] : (!cftensor.t<R, [lay, 1], [1, poly] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [lay, poly], [1, 1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %ic2 = cftensor.inner %nx, %uc[2] : (!cftensor.t<R, [lay, 1], [1, poly] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [lay, poly], [1, 1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %sc = cftensor.binary "add" %ic1, %ic2 : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %ik1 = cftensor.inner %p, %lk[2] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %ik2 = cftensor.inner %n, %uk[2] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %sk = cftensor.binary "add" %ik2, %ik1 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %r = cftensor.combine_poly %sc, %sk : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
    %ik3 = cftensor.inner %p, %uk[2] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %ik4 = cftensor.inner %n, %lk[2] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %mixed = cftensor.binary "add" %ik3, %ik4 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %kept = cftensor.combine_poly %sc, %mixed : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
    cftensor.return %r, %kept : !cftensor.t<P, [batch, curr], [1, 1]>, !cftensor.t<P, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[C:.*]] = cftensor.input "c"
// CHECK-NEXT: %[[A:.*]] = cftensor.input "a"
// CHECK-NEXT: %[[L:.*]] = cftensor.input "l"
// CHECK-NEXT: %[[U:.*]] = cftensor.input "u"
// CHECK:      %[[ONE:.*]] = cftensor.const(1.000000e+00 : f64)
// CHECK-NEXT: %[[R:.*]] = cftensor.substitute_scaled %[[C]], %[[A]], %[[ONE]], %[[L]], %[[U]][2] : ({{.*}}) -> !cftensor.t<P, [batch, curr], [1, 1]>
// CHECK:      %[[KEPT:.*]] = cftensor.combine_poly %{{.*}}, %{{.*}}
// CHECK-NEXT: cftensor.return %[[R]], %[[KEPT]]
