package schemaregistry

import (
	"context"
	"errors"
	"fmt"
)

// Confluent's error codes. The HTTP status is the code's first three
// digits (40401 is 404) or the code itself (409).
const (
	codeSubjectNotFound       = 40401
	codeVersionNotFound       = 40402
	codeSchemaNotFound        = 40403
	codeSubjectSoftDeleted    = 40404
	codeSubjectNotSoftDeleted = 40405
	codeVersionSoftDeleted    = 40406
	codeVersionNotSoftDeleted = 40407
	codeSubjectConfigNotFound = 40408
	codeSubjectModeNotFound   = 40409
	codeIncompatibleSchema    = 409
	codeUnsupportedMediaType  = 415
	codeUnprocessable         = 422
	codeInvalidSchema         = 42201
	codeInvalidVersion        = 42202
	codeInvalidCompatibility  = 42203
	codeInvalidMode           = 42204
	codeOperationNotPermitted = 42205
	codeReferenceExists       = 42206
	codeStoreError            = 50001
	codeOperationTimeout      = 50002
)

// apiError is an error the REST API answers with Confluent's body
// {"error_code":40401,"message":"Subject 'x' not found."}.
type apiError struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

func (e *apiError) status() int {
	if e.Code < 1000 {
		return e.Code
	}
	for c := e.Code; ; c /= 10 {
		if c < 1000 {
			return c
		}
	}
}

func apiErr(code int, format string, args ...any) *apiError {
	return &apiError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func errSubjectNotFound(s string) *apiError {
	return apiErr(codeSubjectNotFound, "Subject '%s' not found.", s)
}

func errVersionNotFound(v int) *apiError {
	return apiErr(codeVersionNotFound, "Version %d not found.", v)
}

func errInvalidVersion(v string) *apiError {
	return apiErr(codeInvalidVersion, "The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", v)
}

func errReadOnly(s string) *apiError {
	return apiErr(codeOperationNotPermitted, "Subject %s is in read-only mode", s)
}

// toAPIError maps an error from the registry's operations to its answer:
// apiErrors as they are, invalid schemas 42201, timeouts 50002, anything
// else (the Log's errors) 50001.
func toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var ie *invalidSchemaError
	if errors.As(err, &ie) {
		return apiErr(codeInvalidSchema, "%s", ie.msg)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return apiErr(codeOperationTimeout, "Operation timed out: %v", err)
	}
	return apiErr(codeStoreError, "Error in the backend data store: %v", err)
}
