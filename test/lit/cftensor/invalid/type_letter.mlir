// An unknown type letter in !cftensor.t: rejected by the type's parser, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Relu" {
    %x = cftensor.input "x" : !cftensor.t<X, [batch, curr], [1, 1]>
    cftensor.return %x : !cftensor.t<X, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt type_letter.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: type_letter.mlir:4:44: unknown type letter 'X', expected one of IRBNEPSC{{$}}
// CHECK-NOT: {{.}}
