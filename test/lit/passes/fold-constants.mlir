// RUN: cf-opt %s -p fold-constants | filecheck %s
// RUN: cf-opt %s -p fold-constants | filecheck %s --check-prefix=GONE
// fold-constants: constant folding and algebraic identities on compile-time scalars
// (!cftensor.t<const T, [1], [1]>):
//   unary(op, const a) -> const op(a)      binary(op, const a, const b) / mult(const a, const b) -> const
//   add(x, 0), add(0, x), sub(x, 0), mult(x, 1), mult(1, x), div(x, 1), and(x, true), or(x, false) -> x
// Kept: a division by the constant 0, sub(0, x) (not an identity), and an identity whose result type
// differs from x's (an Int plus 0.0 is a Real).

builtin.module {
  cftensor.rule "t" "Affine" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1, 1]>
    %b = cftensor.input "b" : !cftensor.t<B, [batch, curr], [1, 1]>
    %i = cftensor.input "i" : !cftensor.t<I, [batch, curr], [1, 1]>
    %zero = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %one = cftensor.const(1.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %two = cftensor.const(2.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %three = cftensor.const(3.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %false = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const B, [1], [1]>
    %true = cftensor.const(1.000000e+00 : f64) : !cftensor.t<const B, [1], [1]>
    %neg = cftensor.unary "neg" %two : (!cftensor.t<const R, [1], [1]>) -> !cftensor.t<const R, [1], [1]>
    %not = cftensor.unary "not" %false : (!cftensor.t<const B, [1], [1]>) -> !cftensor.t<const B, [1], [1]>
    %sum = cftensor.binary "add" %two, %three : (!cftensor.t<const R, [1], [1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<const R, [1], [1]>
    %lt = cftensor.binary "lt" %three, %two : (!cftensor.t<const R, [1], [1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<const B, [1], [1]>
    %prod = cftensor.mult %two, %three : (!cftensor.t<const R, [1], [1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<const R, [1], [1]>
    %quot = cftensor.binary "div" %one, %two : (!cftensor.t<const R, [1], [1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<const R, [1], [1]>
    %divz = cftensor.binary "div" %one, %zero : (!cftensor.t<const R, [1], [1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<const R, [1], [1]>
    %a1 = cftensor.binary "add" %x, %zero : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %a2 = cftensor.binary "add" %zero, %a1 : (!cftensor.t<const R, [1], [1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %a3 = cftensor.binary "sub" %a2, %zero : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %a4 = cftensor.mult %a3, %one : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %a5 = cftensor.mult %one, %a4 : (!cftensor.t<const R, [1], [1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %a6 = cftensor.binary "div" %a5, %one : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %b1 = cftensor.binary "and" %b, %true : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<const B, [1], [1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %b2 = cftensor.binary "or" %false, %b1 : (!cftensor.t<const B, [1], [1]>, !cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %k1 = cftensor.binary "sub" %zero, %x : (!cftensor.t<const R, [1], [1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %k2 = cftensor.binary "add" %i, %zero : (!cftensor.t<I, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %neg, %not, %sum, %lt, %prod, %quot, %divz, %a6, %b2, %k1, %k2 : !cftensor.t<const R, [1], [1]>, !cftensor.t<const B, [1], [1]>, !cftensor.t<const R, [1], [1]>, !cftensor.t<const B, [1], [1]>, !cftensor.t<const R, [1], [1]>, !cftensor.t<const R, [1], [1]>, !cftensor.t<const R, [1], [1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[X:.*]] = cftensor.input "x"
// CHECK-NEXT: %[[B:.*]] = cftensor.input "b"
// CHECK-NEXT: %[[I:.*]] = cftensor.input "i"
// CHECK-NEXT: %[[ZERO:.*]] = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
// CHECK-NEXT: %[[ONE:.*]] = cftensor.const(1.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
// CHECK-DAG:  %[[NEG:.*]] = cftensor.const(-2.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
// CHECK-DAG:  %[[NOT:.*]] = cftensor.const(1.000000e+00 : f64) : !cftensor.t<const B, [1], [1]>
// CHECK-DAG:  %[[SUM:.*]] = cftensor.const(5.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
// CHECK-DAG:  %[[LT:.*]] = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const B, [1], [1]>
// CHECK-DAG:  %[[PROD:.*]] = cftensor.const(6.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
// CHECK-DAG:  %[[QUOT:.*]] = cftensor.const(5.000000e-01 : f64) : !cftensor.t<const R, [1], [1]>
// CHECK-DAG:  %[[DIVZ:.*]] = cftensor.binary "div" %[[ONE]], %[[ZERO]] :
// CHECK-DAG:  %[[K1:.*]] = cftensor.binary "sub" %[[ZERO]], %[[X]] :
// CHECK-DAG:  %[[K2:.*]] = cftensor.binary "add" %[[I]], %[[ZERO]] :
// CHECK:      cftensor.return %[[NEG]], %[[NOT]], %[[SUM]], %[[LT]], %[[PROD]], %[[QUOT]], %[[DIVZ]], %[[X]], %[[B]], %[[K1]], %[[K2]] :

// The folded operations are gone (the only binary ops left are the three kept ones).
// GONE-NOT:   cftensor.unary
// GONE-NOT:   cftensor.mult
// GONE-NOT:   cftensor.binary "{{add|sub|div|lt|and|or}}" %{{two|three|one, %two|x, |a[0-9]|b, |false}}
// GONE:       cftensor.return
