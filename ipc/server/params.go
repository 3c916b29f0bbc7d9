package server

import "errors"

// errParamsMissing refuses a query (/v1/similar, /v1/basis) without its
// params, or with them empty ({}): the daemon cannot tell that the
// features were made with its own parameters, so it does not guess.
var errParamsMissing = errors.New(`params: missing; send the parameters the features were made with, /v1/info's "params"`)
