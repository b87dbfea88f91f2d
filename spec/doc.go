// Package spec is the single source of truth for zerotal lock's public
// surface. Nothing imports it at run time: lockgen (github.com/zerotal/lock/gen)
// loads it with go/packages and emits the Go API in sdk/go (its types and
// their docs, options, config, the error table) and the driver contract in
// driver/driver_gen.go (package spec/driver), and from the same model
// the C ABI: sdk/cshared's exports and header, and the Python client's ctypes
// module.
//
// The spec is ordinary Go so that the compiler checks it and doc comments
// carry over: every doc comment here becomes the doc comment of what is
// generated from it. See README.md for why, and for the vocabulary below in
// more detail.
//
// Declarations and what they mean:
//   - Interfaces are API surfaces. An interface marked //lock:type is
//     emitted as a struct embedding the hand-written state, whose methods
//     call the hand-written implementations; one
//     marked //lock:package lists the package-level functions; the one marked
//     //lock:abi lists the functions only the C ABI has. //lock:c on a method
//     names its C function (or says why it has none).
//   - Structs marked //lock:config are configuration: their fields' tags give
//     the default (default:"..."), the environment variable (env:"...") and
//     the JSON name (json:"...").
//   - Structs marked //lock:options are settings given as option values: each
//     field becomes a With<Field> constructor of the named option type.
//   - [Codes] is the error table: one field per stable error code.
//   - Structs ending in Error are the typed errors named by [Codes]; the one
//     marked //lock:input is what generated code returns for bad input.
//   - A named int type other than Code is an enum; a struct marked
//     //lock:enum T lists its values.
//
// Edit the spec, then run make generate; make check-generated fails when the
// generated files are stale.
package spec
