// Package codeshape holds no code: its tests hold the module's code to
// the shape the house keeps (STYLE.md), such as no function over
// maxBody lines.
package codeshape
