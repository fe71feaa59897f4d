// A constant whose value property is an integer, not a float: rejected by the IRDL property constraint, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Relu" {
    %k = "cftensor.const"() <{value = 1 : i64}> : () -> !cftensor.t<const R, [1], [1]>
    cftensor.return %k : !cftensor.t<const R, [1], [1]>
  }
}

// RUN: cd %S && not cf-opt const_value_type.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: const_value_type.mlir:4:5: 'cftensor.const' op 1 : i64 should be of base attribute float{{$}}
// CHECK-NOT: {{.}}
