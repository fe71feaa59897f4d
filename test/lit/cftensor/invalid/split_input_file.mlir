builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %r = cftensor.reduce %c[2] kind "sum" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %r : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}
// -----
builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %r = cftensor.reduce %c[2] kind "prod" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %r : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}
// -----
builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %r = cftensor.reduce %c[5] kind "sum" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %r : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// Errors in later chunks of --split-input-file name their line in the file, not in the chunk; with
// --verify-diagnostics each chunk's error is printed on the output (as xDSL does for its own) and cf-opt
// goes on with the next chunk.
// RUN: cd %S && not cf-opt split_input_file.mlir --split-input-file 2> %t.err
// RUN: filecheck %s --check-prefix=ERR --input-file %t.err
// ERR-NOT: Traceback
// ERR: {{^}}error: split_input_file.mlir:12:5: 'cftensor.reduce' op reduces by sum, min or max, not 'prod'{{$}}
// ERR-NOT: {{.}}
// RUN: cd %S && cf-opt split_input_file.mlir --split-input-file --verify-diagnostics | filecheck %s --check-prefix=DIAG
// DIAG: cftensor.reduce %{{.*}} kind "sum"
// DIAG: // {{-----}}
// DIAG-NEXT: {{^}}error: split_input_file.mlir:12:5: 'cftensor.reduce' op reduces by sum, min or max, not 'prod'{{$}}
// DIAG-NEXT: // {{-----}}
// DIAG-NEXT: {{^}}error: split_input_file.mlir:20:5: 'cftensor.reduce' op dimension 5 is out of range for rank 3{{$}}
