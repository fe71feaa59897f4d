// RUN: cf-opt %s -p split-inner,dce | filecheck %s
// add(inner(f(clamp(x, min=0)), p), inner(f(clamp(x, max=0)), n)) -> split_inner(f(x), p, n), either
// order of the add; two positive parts, or parts of different tensors, are kept.

builtin.module {
  cftensor.rule "t" "Affine" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr, prev], [1, 1, 1]>
    %y = cftensor.input "y" : !cftensor.t<R, [batch, curr, prev], [1, 1, 1]>
    %p = cftensor.input "p" : !cftensor.t<R, [batch, prev], [1, 1]>
    %n = cftensor.input "n" : !cftensor.t<R, [batch, prev], [1, 1]>
    %pos = cftensor.clamp %x min(0.000000e+00 : f64) : (!cftensor.t<R, [batch, curr, prev], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, prev], [1, 1, 1]>
    %neg = cftensor.clamp %x max(0.000000e+00 : f64) : (!cftensor.t<R, [batch, curr, prev], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, prev], [1, 1, 1]>
    %yneg = cftensor.clamp %y max(0.000000e+00 : f64) : (!cftensor.t<R, [batch, curr, prev], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, prev], [1, 1, 1]>
    %a = cftensor.inner %pos, %p[2] : (!cftensor.t<R, [batch, curr, prev], [1, 1, 1]>, !cftensor.t<R, [batch, prev], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %b = cftensor.inner %neg, %n[2] : (!cftensor.t<R, [batch, curr, prev], [1, 1, 1]>, !cftensor.t<R, [batch, prev], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %c = cftensor.inner %pos, %n[2] : (!cftensor.t<R, [batch, curr, prev], [1, 1, 1]>, !cftensor.t<R, [batch, prev], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %d = cftensor.inner %yneg, %n[2] : (!cftensor.t<R, [batch, curr, prev], [1, 1, 1]>, !cftensor.t<R, [batch, prev], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %s = cftensor.binary "add" %b, %a : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %both_pos = cftensor.binary "add" %a, %c : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %other = cftensor.binary "add" %a, %d : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %s, %both_pos, %other : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// CHECK:      %[[X:.*]] = cftensor.input "x"
// CHECK:      %[[P:.*]] = cftensor.input "p"
// CHECK-NEXT: %[[N:.*]] = cftensor.input "n"
// CHECK:      %[[S:.*]] = cftensor.split_inner %[[X]], %[[P]], %[[N]][2]
// CHECK:      %[[BP:.*]] = cftensor.binary "add" %{{.*}}, %{{.*}}
// CHECK-NEXT: %[[O:.*]] = cftensor.binary "add" %{{.*}}, %{{.*}}
// CHECK-NEXT: cftensor.return %[[S]], %[[BP]], %[[O]]
// CHECK-NOT:  split_inner
