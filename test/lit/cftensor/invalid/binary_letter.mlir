// A comparison whose result is typed R, not a truth value: rejected by the result-letter check of BinaryOp.verify_, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Relu" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1, 1]>
    %y = cftensor.binary "gt" %x, %x : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %y : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt binary_letter.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: binary_letter.mlir:5:5: 'cftensor.binary' op 'gt' gives a truth value (type letter B), not R{{$}}
// CHECK-NOT: {{.}}
