// RUN: cf-opt %s -p interval-inner,dce | filecheck %s
// split_inner(x, l, u, d), split_inner(x, u, l, d) -> interval_inner(x, l, u, d): the lower and the upper
// bound of one product over a box.  A lone split, or one whose partner contracts another dimension or
// another x, is kept.

builtin.module {
  cftensor.rule "t" "Affine" {
    %x = cftensor.input "x" : !cftensor.t<R, [1, curr, poly], [batch, 1, 1]>
    %y = cftensor.input "y" : !cftensor.t<R, [1, curr, poly], [batch, 1, 1]>
    %l = cftensor.input "l" : !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>
    %u = cftensor.input "u" : !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>
    %lo = cftensor.split_inner %x, %l, %u[2] : (!cftensor.t<R, [1, curr, poly], [batch, 1, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %other = cftensor.split_inner %y, %u, %l[2] : (!cftensor.t<R, [1, curr, poly], [batch, 1, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %hi = cftensor.split_inner %x, %u, %l[2] : (!cftensor.t<R, [1, curr, poly], [batch, 1, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %lo, %other, %hi : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[X:.*]] = cftensor.input "x"
// CHECK:      %[[L:.*]] = cftensor.input "l"
// CHECK-NEXT: %[[U:.*]] = cftensor.input "u"
// CHECK-NEXT: %[[LO:.*]], %[[HI:.*]] = cftensor.interval_inner %[[X]], %[[L]], %[[U]][2] : ({{.*}}) -> (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>)
// CHECK-NEXT: %[[OTHER:.*]] = cftensor.split_inner %{{.*}}, %[[U]], %[[L]][2]
// CHECK-NEXT: cftensor.return %[[LO]], %[[OTHER]], %[[HI]]
