// RUN: cf-opt %s -p uniform-branch,dce | filecheck %s
// ternary(bcast(c), a, b) with c uniform -> if c then {slice(a); a} else {slice(b); b}: ternaries on one
// uniform condition share one cftensor.if, whose regions hold the ops only their branch uses.  An op
// both branches use stays before it; a condition that varies per neuron stays a ternary.

builtin.module {
  cftensor.rule "t" "Affine" {
    %curr = cftensor.input "curr" : !cftensor.t<N, [1, curr], [batch, 1]>
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1, 1]>
    %ll = cftensor.access "last_layer" %curr : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<I, [1, 1], [batch, curr]>
    %one = cftensor.const(1.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %c = cftensor.binary "eq" %ll, %one : (!cftensor.t<I, [1, 1], [batch, curr]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [1, 1], [batch, curr]>
    %cb = cftensor.repeat %c[0] size "batch" : (!cftensor.t<B, [1, 1], [batch, curr]>) -> !cftensor.t<B, [batch, 1], [1, curr]>
    %cc = cftensor.repeat %cb[1] size "curr" : (!cftensor.t<B, [batch, 1], [1, curr]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %shared = cftensor.unary "abs" %x : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %a1 = cftensor.unary "sigmoid" %shared : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %a2 = cftensor.unary "exp" %a1 : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %b1 = cftensor.unary "tanh" %shared : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %r1 = cftensor.ternary %cc, %a2, %b1 : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %r2 = cftensor.ternary %cc, %shared, %x : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %zero = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %pos = cftensor.binary "ge" %x, %zero : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %r3 = cftensor.ternary %pos, %x, %shared : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %r1, %r2, %r3 : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[X:.*]] = cftensor.input "x"
// CHECK:      %[[C:.*]] = cftensor.binary "eq"
// CHECK-NEXT: %[[SHARED:.*]] = cftensor.unary "abs" %[[X]]
// CHECK-NEXT: %[[R1:.*]], %[[R2:.*]] = cftensor.if %[[C]] : (!cftensor.t<B, [1, 1], [batch, curr]>) -> (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) then {
// CHECK-NEXT:   %[[A1:.*]] = cftensor.unary "sigmoid" %[[SHARED]]
// CHECK-NEXT:   %[[A2:.*]] = cftensor.unary "exp" %[[A1]]
// CHECK-NEXT:   cftensor.return %[[A2]], %[[SHARED]]
// CHECK-NEXT: } else {
// CHECK-NEXT:   %[[B1:.*]] = cftensor.unary "tanh" %[[SHARED]]
// CHECK-NEXT:   cftensor.return %[[B1]], %[[X]]
// CHECK-NEXT: }
// CHECK:      %[[R3:.*]] = cftensor.ternary %{{.*}}, %[[X]], %[[SHARED]]
// CHECK-NEXT: cftensor.return %[[R1]], %[[R2]], %[[R3]]
