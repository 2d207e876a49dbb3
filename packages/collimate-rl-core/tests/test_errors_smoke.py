from collimate_rl import CollimateError, GatewayError


def test_gateway_error_is_collimate_error() -> None:
    err = GatewayError("nope", 403, "forbidden")
    assert isinstance(err, CollimateError)
    assert err.error_code == err.code == "forbidden"
