// RUN: cf-opt %s -p masked-reduce,dce | filecheck %s
// reduce(where(ne(c, 0), p, inf), min) -> masked_reduce(c, p, min), with ne(0, c) too, and -inf with max.
// The wrong identity (a where that gives 0 where c is 0) or a mask that is not a non-zero test is kept.

builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %p = cftensor.input "p" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %m = cftensor.input "m" : !cftensor.t<B, [batch, curr, poly], [1, 1, 1]>
    %zero = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %inf = cftensor.const(0x7FF0000000000000 : f64) : !cftensor.t<const R, [1], [1]>
    %ninf = cftensor.const(0xFFF0000000000000 : f64) : !cftensor.t<const R, [1], [1]>
    %nz = cftensor.binary "ne" %c, %zero : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [batch, curr, poly], [1, 1, 1]>
    %zn = cftensor.binary "ne" %zero, %c : (!cftensor.t<const R, [1], [1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<B, [batch, curr, poly], [1, 1, 1]>
    %w1 = cftensor.ternary %nz, %p, %inf : (!cftensor.t<B, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %w2 = cftensor.ternary %zn, %p, %ninf : (!cftensor.t<B, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %w3 = cftensor.ternary %nz, %p, %zero : (!cftensor.t<B, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %w4 = cftensor.ternary %m, %p, %inf : (!cftensor.t<B, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %r1 = cftensor.reduce %w1[2] kind "min" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %r2 = cftensor.reduce %w2[2] kind "max" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %r3 = cftensor.reduce %w3[2] kind "min" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %r4 = cftensor.reduce %w4[2] kind "min" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %r5 = cftensor.reduce %w2[2] kind "min" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %r1, %r2, %r3, %r4, %r5 : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[C:.*]] = cftensor.input "c"
// CHECK-NEXT: %[[P:.*]] = cftensor.input "p"
// CHECK:      %[[R1:.*]] = cftensor.masked_reduce %[[C]], %[[P]][2] kind "min"
// CHECK-NEXT: %[[R2:.*]] = cftensor.masked_reduce %[[C]], %[[P]][2] kind "max"
// CHECK-NEXT: %[[R3:.*]] = cftensor.reduce %{{.*}}[2] kind "min"
// CHECK-NEXT: %[[R4:.*]] = cftensor.reduce %{{.*}}[2] kind "min"
// CHECK-NEXT: %[[R5:.*]] = cftensor.reduce %{{.*}}[2] kind "min"
// CHECK-NEXT: cftensor.return %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]]
