# bench_peers.sh: Varnish in front of the origin
vcl 4.1;

backend origin {
	.host = "127.0.0.1";
	.port = "57985";
}

sub vcl_recv {
	if (req.method != "GET" && req.method != "HEAD") {
		return (pass);
	}
	unset req.http.Cookie;
	return (hash);
}

sub vcl_backend_response {
	set beresp.ttl = 1h;
	set beresp.do_stream = true;
}

sub vcl_deliver {
	if (obj.hits > 0) {
		set resp.http.X-Cache = "HIT";
	} else {
		set resp.http.X-Cache = "MISS";
	}
}
