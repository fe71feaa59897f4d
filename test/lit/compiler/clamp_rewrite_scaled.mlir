// RUN: cf-opt %s -p clamp-rewrite | filecheck %s
// mult(ge(x, 0), mult(x, a)) -> mult(clamp(x, min=0), a);  mult(mult(a, x), not(ge(x, 0))) -> mult(clamp(x, max=0), a)
// (alpha-CROWN's scaled sides).  Kept: a scale that may be infinite (a quotient: 0 * inf is NaN where
// the mask gives 0), and a product of another value.

builtin.module {
  cftensor.rule "t" "Relu" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1, 1]>
    %a = cftensor.input "a" : !cftensor.t<R, [batch, curr], [1, 1]>
    %y = cftensor.input "y" : !cftensor.t<R, [batch, curr], [1, 1]>
    %z = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %ge = cftensor.binary "ge" %x, %z : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %xa = cftensor.mult %x, %a : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %pos = cftensor.mult %ge, %xa : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %lt = cftensor.unary "not" %ge : (!cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %ax = cftensor.mult %a, %x : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %neg = cftensor.mult %ax, %lt : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %q = cftensor.binary "div" %a, %y : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %xq = cftensor.mult %x, %q : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %infinite = cftensor.mult %ge, %xq : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %ya = cftensor.mult %y, %a : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %other = cftensor.mult %ge, %ya : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %pos, %neg, %infinite, %other : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[X:.*]] = cftensor.input "x"
// CHECK-NEXT: %[[A:.*]] = cftensor.input "a"
// CHECK:      %[[P:.*]] = cftensor.clamp %[[X]] min(0.000000e+00 : f64)
// CHECK-NEXT: %[[PA:.*]] = cftensor.mult %[[P]], %[[A]]
// CHECK:      %[[N:.*]] = cftensor.clamp %[[X]] max(0.000000e+00 : f64)
// CHECK-NEXT: %[[NA:.*]] = cftensor.mult %[[N]], %[[A]]
// CHECK:      %[[I:.*]] = cftensor.mult %{{.*}}, %{{.*}} : (!cftensor.t<B
// CHECK:      %[[O:.*]] = cftensor.mult %{{.*}}, %{{.*}} : (!cftensor.t<B
// CHECK-NEXT: cftensor.return %[[PA]], %[[NA]], %[[I]], %[[O]]
