// Package sqlstate names the SQLSTATE codes queryflux raises, matches or translates, so a code
// is written once here and read by its name everywhere else. The names are PostgreSQL's
// condition names (Appendix A of its manual); the ODBC-style states MySQL uses have a MySQL
// prefix. It is constants only: it touches nothing.
package sqlstate

// Class 08: connection exception.
const (
	ConnectionFailure                             = "08006"
	SQLClientUnableToEstablishSQLConnection       = "08001"
	SQLServerRejectedEstablishmentOfSQLConnection = "08004"
	ProtocolViolation                             = "08P01"
)

// Classes 0A, 22, 23, 25, 26, 28, 34, 3D, 3F: statement, data and session errors.
const (
	FeatureNotSupported               = "0A000"
	DataException                     = "22000"
	StringDataRightTruncation         = "22001"
	NumericValueOutOfRange            = "22003"
	InvalidDatetimeFormat             = "22007"
	DatetimeFieldOverflow             = "22008"
	DivisionByZero                    = "22012"
	ArraySubscriptError               = "2202E"
	InvalidParameterValue             = "22023"
	InvalidTextRepresentation         = "22P02"
	InvalidBinaryRepresentation       = "22P03"
	BadCopyFileFormat                 = "22P04"
	IntegrityConstraintViolation      = "23000"
	NotNullViolation                  = "23502"
	ForeignKeyViolation               = "23503"
	UniqueViolation                   = "23505"
	CheckViolation                    = "23514"
	InvalidTransactionState           = "25000"
	ReadOnlySQLTransaction            = "25006"
	NoActiveSQLTransaction            = "25P01"
	InFailedSQLTransaction            = "25P02"
	InvalidSQLStatementName           = "26000"
	InvalidAuthorizationSpecification = "28000"
	InvalidPassword                   = "28P01"
	InvalidCursorName                 = "34000"
	InvalidSavepointSpecification     = "3B001"
	InvalidCatalogName                = "3D000"
	InvalidSchemaName                 = "3F000"
)

// Classes 40 and 42: transaction rollback, syntax error or access rule violation.
const (
	TransactionRollback              = "40000"
	SerializationFailure             = "40001"
	DeadlockDetected                 = "40P01"
	SyntaxErrorOrAccessRuleViolation = "42000"
	InsufficientPrivilege            = "42501"
	SyntaxError                      = "42601"
	DuplicateColumn                  = "42701"
	AmbiguousColumn                  = "42702"
	UndefinedColumn                  = "42703"
	UndefinedObject                  = "42704"
	DuplicateObject                  = "42710"
	DatatypeMismatch                 = "42804"
	UndefinedFunction                = "42883"
	UndefinedTable                   = "42P01"
	DuplicateCursor                  = "42P03"
	DuplicateDatabase                = "42P04"
	DuplicatePreparedStatement       = "42P05"
	DuplicateTable                   = "42P07"
	DuplicateSchema                  = "42P06"
	DependentObjectsStillExist       = "2BP01"
	InvalidCursorDefinition          = "42P11"
)

// Classes 53 to 58 and XX: resources, limits, operator intervention, system errors.
const (
	InsufficientResources        = "53000"
	OutOfMemory                  = "53200"
	TooManyConnections           = "53300"
	ProgramLimitExceeded         = "54000"
	ObjectNotInPrerequisiteState = "55000"
	LockNotAvailable             = "55P03"
	QueryCanceled                = "57014"
	AdminShutdown                = "57P01"
	CannotConnectNow             = "57P03"
	SystemError                  = "58000"
	InternalError                = "XX000"
)

// The ODBC-style states MySQL and MariaDB answer with, where PostgreSQL has its own.
const (
	MySQLGeneralError      = "HY000"
	MySQLCommunicationLink = "08S01"
	MySQLTableExists       = "42S01"
	MySQLNoSuchTable       = "42S02"
	MySQLNoSuchColumn      = "42S22"
	MySQLInterrupted       = "70100"
)
