// RUN: cf-opt %s -p matmul-rewrite | filecheck %s
// reduce(mult(repeat(a), repeat(b))) -> inner(a, b), also with the operands commuted.

builtin.module {
  cftensor.rule "t" "Affine" {
    %a = cftensor.input "a" : !cftensor.t<R, [curr, poly, 1], [1, 1, poly]>
    %b = cftensor.input "b" : !cftensor.t<R, [1, poly, poly], [curr, 1, 1]>
    %ra = cftensor.repeat %a[2] size "poly" : (!cftensor.t<R, [curr, poly, 1], [1, 1, poly]>) -> !cftensor.t<R, [curr, poly, poly], [1, 1, 1]>
    %rb = cftensor.repeat %b[0] size "curr" : (!cftensor.t<R, [1, poly, poly], [curr, 1, 1]>) -> !cftensor.t<R, [curr, poly, poly], [1, 1, 1]>
    %m = cftensor.mult %ra, %rb : (!cftensor.t<R, [curr, poly, poly], [1, 1, 1]>, !cftensor.t<R, [curr, poly, poly], [1, 1, 1]>) -> !cftensor.t<R, [curr, poly, poly], [1, 1, 1]>
    %r = cftensor.reduce %m[1] kind "sum" : (!cftensor.t<R, [curr, poly, poly], [1, 1, 1]>) -> !cftensor.t<R, [curr, poly], [1, 1]>
    %m2 = cftensor.mult %rb, %ra : (!cftensor.t<R, [curr, poly, poly], [1, 1, 1]>, !cftensor.t<R, [curr, poly, poly], [1, 1, 1]>) -> !cftensor.t<R, [curr, poly, poly], [1, 1, 1]>
    %r2 = cftensor.reduce %m2[1] kind "sum" : (!cftensor.t<R, [curr, poly, poly], [1, 1, 1]>) -> !cftensor.t<R, [curr, poly], [1, 1]>
    cftensor.return %r, %r2 : !cftensor.t<R, [curr, poly], [1, 1]>, !cftensor.t<R, [curr, poly], [1, 1]>
  }
}

// CHECK:      %[[A:.*]] = cftensor.input "a"
// CHECK-NEXT: %[[B:.*]] = cftensor.input "b"
// CHECK-NOT:  cftensor.reduce
// CHECK:      %[[R:.*]] = cftensor.inner %[[A]], %[[B]][1] : (!cftensor.t<R, [curr, poly, 1], [1, 1, poly]>, !cftensor.t<R, [1, poly, poly], [curr, 1, 1]>) -> !cftensor.t<R, [curr, poly], [1, 1]>
// CHECK:      %[[R2:.*]] = cftensor.inner %[[B]], %[[A]][1]
// CHECK:      cftensor.return %[[R]], %[[R2]]
