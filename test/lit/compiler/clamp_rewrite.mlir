// RUN: cf-opt %s -p clamp-rewrite | filecheck %s
// mult(ge(x, 0), x) -> clamp(x, min=0);  mult(not(ge(x, 0)), x) -> clamp(x, max=0);  mult(le(x, 0), x) -> clamp(x, max=0)
// binary(max, x, c) -> clamp(x, min=c);  binary(min, c, x) -> clamp(x, max=c) (c a constant; not between two tensors)

builtin.module {
  cftensor.rule "t" "Relu" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1, 1]>
    %z = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %ge = cftensor.binary "ge" %x, %z : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %pos = cftensor.mult %ge, %x : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %lt = cftensor.unary "not" %ge : (!cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %neg = cftensor.mult %x, %lt : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %le = cftensor.binary "le" %x, %z : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %neg2 = cftensor.mult %le, %x : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %y = cftensor.input "y" : !cftensor.t<R, [batch, curr], [1, 1]>
    %other = cftensor.mult %ge, %y : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %q = cftensor.const(2.500000e-01 : f64) : !cftensor.t<const R, [1], [1]>
    %mx = cftensor.binary "max" %x, %q : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %mn = cftensor.binary "min" %q, %x : (!cftensor.t<const R, [1], [1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %two = cftensor.binary "max" %x, %y : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %pos, %neg, %neg2, %other, %mx, %mn, %two : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[X:.*]] = cftensor.input "x"
// CHECK:      %[[P:.*]] = cftensor.clamp %[[X]] min(0.000000e+00 : f64)
// CHECK:      %[[N:.*]] = cftensor.clamp %[[X]] max(0.000000e+00 : f64)
// CHECK:      %[[N2:.*]] = cftensor.clamp %[[X]] max(0.000000e+00 : f64)
// A mask of another value is no clamp:
// CHECK:      %[[O:.*]] = cftensor.mult %{{.*}}, %{{.*}}
// CHECK:      %[[MX:.*]] = cftensor.clamp %[[X]] min(2.500000e-01 : f64)
// CHECK:      %[[MN:.*]] = cftensor.clamp %[[X]] max(2.500000e-01 : f64)
// The max of two tensors stays:
// CHECK:      %[[T:.*]] = cftensor.binary "max" %[[X]], %{{.*}} :
// CHECK-NEXT: cftensor.return %[[P]], %[[N]], %[[N2]], %[[O]], %[[MX]], %[[MN]], %[[T]]
