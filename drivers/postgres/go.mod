module github.com/zerotal/lock/drivers/postgres

go 1.26.0

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/zerotal/lock/conformance v0.1.0
	github.com/zerotal/lock/driver v0.1.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/zerotal/lock/drivers/memory v0.1.0 // indirect
	github.com/zerotal/lock/sdk/go v0.1.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
