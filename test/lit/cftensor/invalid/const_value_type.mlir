// A constant whose value property is an integer, not a float: rejected by the IRDL property constraint, as one line file:line:col: error: ...
builtin.module {
  cftensor.rule "t" "Relu" {
    %k = "cftensor.const"() <{value = 1 : i64}> : () -> !cftensor.t<const R, [1], [1]>
    cftensor.return %k : !cftensor.t<const R, [1], [1]>
  }
}

// RUN: cd %S && not cf-opt const_value_type.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}const_value_type.mlir:4:5: error: 'cftensor.const' op 1 : i64 should be of base attribute float{{$}}
// CHECK-NOT: {{.}}
