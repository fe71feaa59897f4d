// RUN: cf-opt %s -p guarded-compare | filecheck %s
// and(a, cmp(where(a, p, q), m)) -> and(a, cmp(p, m)), for either operand order of the conjunction and
// either side of the comparison; a where on another mask is kept.

builtin.module {
  cftensor.rule "t" "Relu" {
    %a = cftensor.input "a" : !cftensor.t<B, [batch, curr], [1, 1]>
    %b = cftensor.input "b" : !cftensor.t<B, [batch, curr], [1, 1]>
    %p = cftensor.input "p" : !cftensor.t<R, [batch, curr], [1, 1]>
    %m = cftensor.input "m" : !cftensor.t<R, [batch, curr], [1, 1]>
    %inf = cftensor.const(0x7FF0000000000000 : f64) : !cftensor.t<const R, [1], [1]>
    %w = cftensor.ternary %a, %p, %inf : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %eq = cftensor.binary "eq" %w, %m : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %s = cftensor.binary "and" %a, %eq : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %le = cftensor.binary "le" %m, %w : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %t = cftensor.binary "and" %le, %a : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %o = cftensor.binary "and" %b, %eq : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    cftensor.return %s, %t, %o : !cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<B, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[A:.*]] = cftensor.input "a"
// CHECK:      %[[P:.*]] = cftensor.input "p"
// CHECK-NEXT: %[[M:.*]] = cftensor.input "m"
// CHECK:      %[[EQ:.*]] = cftensor.binary "eq" %{{.*}}, %[[M]]
// CHECK-NEXT: %[[EQ2:.*]] = cftensor.binary "eq" %[[P]], %[[M]]
// CHECK-NEXT: %[[S:.*]] = cftensor.binary "and" %[[A]], %[[EQ2]]
// CHECK:      %[[LE2:.*]] = cftensor.binary "le" %[[M]], %[[P]]
// CHECK-NEXT: %[[T:.*]] = cftensor.binary "and" %[[LE2]], %[[A]]
// The conjunction with another mask still needs the masked copy:
// CHECK-NEXT: %[[O:.*]] = cftensor.binary "and" %{{.*}}, %[[EQ]]
// CHECK-NEXT: cftensor.return %[[S]], %[[T]], %[[O]]
