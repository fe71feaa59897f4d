// RUN: cf-opt %s -p ternary-to-arith | filecheck %s
// ternary(c, a, b) -> add(mult(c, a), mult(not(c), b)) when neither branch can divide or be +-inf.

builtin.module {
  cftensor.rule "t" "Relu" {
    %a = cftensor.input "a" : !cftensor.t<R, [batch, curr], [1, 1]>
    %b = cftensor.input "b" : !cftensor.t<R, [batch, curr], [1, 1]>
    %z = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %c = cftensor.binary "ge" %a, %z : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %t = cftensor.ternary %c, %a, %b : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %q = cftensor.binary "div" %a, %b : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %s = cftensor.ternary %c, %q, %b : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %r = cftensor.ternary %c, %a, %z : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %t, %s, %r : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[C:.*]] = cftensor.binary "ge" %[[A:.*]], %{{.*}}
// CHECK-NEXT: %[[M1:.*]] = cftensor.mult %[[C]], %[[A]]
// CHECK-NEXT: %[[N:.*]] = cftensor.unary "not" %[[C]]
// CHECK-NEXT: %[[M2:.*]] = cftensor.mult %[[N]], %[[B:.*]] :
// CHECK-NEXT: %[[T:.*]] = cftensor.binary "add" %[[M1]], %[[M2]]
// The branch that divides keeps its ternary (0 * (a / 0) would be NaN):
// CHECK:      %[[S:.*]] = cftensor.ternary %[[C]], %{{.*}}, %[[B]]
// A zero branch is dropped:
// CHECK-NEXT: %[[R:.*]] = cftensor.mult %[[C]], %[[A]]
// CHECK-NEXT: cftensor.return %[[T]], %[[S]], %[[R]]
