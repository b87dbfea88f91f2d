module github.com/zerotal/lock/gen

go 1.26.0

require (
	github.com/dave/jennifer v1.7.1 // indirect
	golang.org/x/tools v0.52.0 // indirect
)
