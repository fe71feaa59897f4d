// RUN: cf-opt %s -p interval-inner,dce | filecheck %s
// RUN: cf-opt %s -p interval-inner,dce | cf-opt | filecheck %s
// lo + b, hi + b of interval_inner(x, l, u, d) -> interval_inner(x, l, u, b, d): the same addend of both
// bounds (an affine layer's bias) goes onto the centre before the split.  Kept: bounds with different
// addends, or a bound that something else reads too.

builtin.module {
  cftensor.rule "t" "Affine" {
    %x = cftensor.input "x" : !cftensor.t<R, [1, curr, poly], [batch, 1, 1]>
    %l = cftensor.input "l" : !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>
    %u = cftensor.input "u" : !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>
    %b = cftensor.input "b" : !cftensor.t<R, [batch, curr], [1, 1]>
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr], [1, 1]>
    %lo, %hi = cftensor.interval_inner %x, %l, %u[2] : (!cftensor.t<R, [1, curr, poly], [batch, 1, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>) -> (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>)
    %lb = cftensor.binary "add" %lo, %b : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %hb = cftensor.binary "add" %b, %hi : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %lo2, %hi2 = cftensor.interval_inner %x, %u, %l[2] : (!cftensor.t<R, [1, curr, poly], [batch, 1, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>) -> (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>)
    %lb2 = cftensor.binary "add" %lo2, %b : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %hc2 = cftensor.binary "add" %hi2, %c : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %lo3, %hi3 = cftensor.interval_inner %x, %l, %l[2] : (!cftensor.t<R, [1, curr, poly], [batch, 1, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>) -> (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>)
    %lb3 = cftensor.binary "add" %lo3, %b : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %hb3 = cftensor.binary "add" %hi3, %b : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %lb, %hb, %lb2, %hc2, %lb3, %hb3, %hi3 : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[X:.*]] = cftensor.input "x"
// CHECK-NEXT: %[[L:.*]] = cftensor.input "l"
// CHECK-NEXT: %[[U:.*]] = cftensor.input "u"
// CHECK-NEXT: %[[B:.*]] = cftensor.input "b"
// CHECK-NEXT: %[[C:.*]] = cftensor.input "c"
// CHECK-NEXT: %[[LB:.*]], %[[HB:.*]] = cftensor.interval_inner %[[X]], %[[L]], %[[U]], %[[B]][2] : ({{.*}}) -> (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>)
// CHECK-NEXT: %[[LO2:.*]], %[[HI2:.*]] = cftensor.interval_inner %[[X]], %[[U]], %[[L]][2]
// CHECK-NEXT: %[[LB2:.*]] = cftensor.binary "add" %[[LO2]], %[[B]]
// CHECK-NEXT: %[[HC2:.*]] = cftensor.binary "add" %[[HI2]], %[[C]]
// CHECK-NEXT: %[[LO3:.*]], %[[HI3:.*]] = cftensor.interval_inner %[[X]], %[[L]], %[[L]][2]
// CHECK-NEXT: %[[LB3:.*]] = cftensor.binary "add" %[[LO3]], %[[B]]
// CHECK-NEXT: %[[HB3:.*]] = cftensor.binary "add" %[[HI3]], %[[B]]
// CHECK-NEXT: cftensor.return %[[LB]], %[[HB]], %[[LB2]], %[[HC2]], %[[LB3]], %[[HB3]], %[[HI3]]
