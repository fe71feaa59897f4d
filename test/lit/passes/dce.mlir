// RUN: cf-opt %s -p dce | filecheck %s
// dce (xDSL's dead code elimination) on cftensor IR: Pure cftensor ops whose results nobody uses go,
// transitively (an unused rule input too).  Kept: everything the rule returns, and an unused
// cftensor.sym (not Pure: it draws a fresh noise symbol).

builtin.module {
  cftensor.rule "t" "Relu" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1, 1]>
    %dead_in = cftensor.input "y" : !cftensor.t<R, [batch, curr], [1, 1]>
    %zero = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %dead1 = cftensor.binary "max" %dead_in, %zero : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %dead2 = cftensor.unary "exp" %dead1 : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %eps = cftensor.sym : !cftensor.t<E, [1, curr], [batch, 1]>
    %live = cftensor.binary "min" %x, %zero : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %live : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// CHECK:      cftensor.rule "t" "Relu" {
// CHECK-NEXT:   %[[X:.*]] = cftensor.input "x"
// CHECK-NEXT:   %[[ZERO:.*]] = cftensor.const(0.000000e+00 : f64)
// CHECK-NEXT:   %{{.*}} = cftensor.sym : !cftensor.t<E, [1, curr], [batch, 1]>
// CHECK-NEXT:   %[[LIVE:.*]] = cftensor.binary "min" %[[X]], %[[ZERO]]
// CHECK-NEXT:   cftensor.return %[[LIVE]] : !cftensor.t<R, [batch, curr], [1, 1]>
// CHECK-NEXT: }
