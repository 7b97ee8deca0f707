//! What a server says about the models it serves: llama.cpp's `GET /props`
//! reports the context it was started with (`-c`), Ollama's `POST /api/show`
//! the model's (`num_ctx` of its parameters, else `<arch>.context_length` of
//! its `model_info`), so a session can compact in time without being told
//! the window; an OpenAI-compatible `GET /models` lists the models RPC
//! `get_available_models` offers.

use std::time::Duration;

use serde_json::Value;

/// How long the question may take; a server that does not answer has no say.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The context window the server at `base_url` (an OpenAI-compatible URL such
/// as `http://127.0.0.1:8080/v1`) reports for `model`: llama.cpp's `/props`,
/// else Ollama's `/api/show`; `None` when neither answers.
pub async fn server_context_window(base_url: &str, model: &str) -> Option<u64> {
    let root = base_url.trim_end_matches('/');
    let root = root.strip_suffix("/v1").unwrap_or(root);
    let client = reqwest::Client::builder()
        .timeout(PROBE_TIMEOUT)
        .build()
        .ok()?;
    match json_of(client.get(format!("{root}/props"))).await {
        Some(props) => llama_cpp_window(&props),
        None => {
            let show = client
                .post(format!("{root}/api/show"))
                .header("content-type", "application/json")
                .body(serde_json::json!({"model": model}).to_string());
            ollama_window(&json_of(show).await?)
        }
    }
}

/// The JSON body of a successful answer to `request`.
async fn json_of(request: reqwest::RequestBuilder) -> Option<Value> {
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    serde_json::from_str(&response.text().await.ok()?).ok()
}

/// `n_ctx` of llama.cpp's `/props`.
fn llama_cpp_window(props: &Value) -> Option<u64> {
    props
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| props.get("n_ctx"))
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
}

/// Ollama's window for a model: `num_ctx` when its parameters set one (what
/// the server runs it with), else the model's own `*.context_length`.
fn ollama_window(show: &Value) -> Option<u64> {
    let num_ctx = show
        .get("parameters")
        .and_then(Value::as_str)
        .into_iter()
        .flat_map(str::lines)
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx"))
                .then(|| words.next()?.parse::<u64>().ok())
                .flatten()
        });
    let trained = || {
        show.get("model_info")?
            .as_object()?
            .iter()
            .find(|(key, _)| key.ends_with(".context_length"))?
            .1
            .as_u64()
    };
    num_ctx.or_else(trained).filter(|&n| n > 0)
}

/// The model ids an OpenAI-compatible server lists at `GET /models`
/// (`{"data":[{"id":...}]}`); none when it does not answer.
pub async fn server_models(base_url: &str, api_key: Option<&str>) -> Vec<String> {
    let Ok(client) = reqwest::Client::builder().timeout(PROBE_TIMEOUT).build() else {
        return Vec::new();
    };
    let mut request = client.get(format!("{}/models", base_url.trim_end_matches('/')));
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    let Ok(response) = request.send().await else {
        return Vec::new();
    };
    if !response.status().is_success() {
        return Vec::new();
    }
    let Some(list) = response
        .text()
        .await
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
    else {
        return Vec::new();
    };
    list.get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|model| model.get("id")?.as_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;

    /// A server answering one request with `status` and `body`.
    fn serve_once(status: &'static str, body: &'static str) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        });
        format!("http://{addr}/v1")
    }

    /// One request, head and body (as long as its `content-length`).
    fn read_request(stream: &mut std::net::TcpStream) -> String {
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 1024];
        loop {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|line| {
                        let (name, value) = line.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())
                            .flatten()
                    })
                    .unwrap_or(0);
                if body.len() >= length {
                    return text;
                }
            }
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return text,
                Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// A server answering each request by its request line: `routes` holds
    /// `(request line prefix, status, body)`; anything else is a 404.
    fn serve_routes(routes: Vec<(&'static str, &'static str, &'static str)>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let request = read_request(&mut stream);
                let (status, body) = routes
                    .iter()
                    .find(|(line, _, _)| request.starts_with(line))
                    .map_or(("404 Not Found", "{}"), |&(_, status, body)| (status, body));
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        format!("http://{addr}/v1")
    }

    #[tokio::test]
    async fn llama_cpp_reports_its_context_in_props() {
        let url = serve_once(
            "200 OK",
            r#"{"default_generation_settings":{"n_ctx":4096},"total_slots":1}"#,
        );
        assert_eq!(server_context_window(&url, "m").await, Some(4096));
    }

    #[tokio::test]
    async fn ollama_reports_the_models_context_in_api_show() {
        let url = serve_routes(vec![(
            "POST /api/show ",
            "200 OK",
            r#"{"parameters":"stop \"<|im_end|>\"","model_info":{"general.architecture":"qwen2","qwen2.context_length":32768}}"#,
        )]);
        assert_eq!(
            server_context_window(&url, "qwen2.5-coder").await,
            Some(32768)
        );
        let url = serve_routes(vec![(
            "POST /api/show ",
            "200 OK",
            r#"{"parameters":"num_ctx                        8192\ntemperature 0","model_info":{"llama.context_length":131072}}"#,
        )]);
        assert_eq!(
            server_context_window(&url, "llama3.1").await,
            Some(8192),
            "num_ctx is what the server runs the model with"
        );
    }

    #[tokio::test]
    async fn ollama_is_asked_about_the_model_in_use() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = std::thread::spawn(move || {
            let mut bodies = Vec::new();
            for _ in 0..2 {
                let (mut stream, _) = listener.accept().unwrap();
                bodies.push(read_request(&mut stream));
                let body = r#"{"model_info":{"gemma3.context_length":2048}}"#;
                let status = if bodies.len() == 1 {
                    "404 Not Found"
                } else {
                    "200 OK"
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
            bodies
        });
        let url = format!("http://{addr}/v1");
        assert_eq!(server_context_window(&url, "gemma3:1b").await, Some(2048));
        let requests = seen.join().unwrap();
        assert!(requests[0].starts_with("GET /props "), "{}", requests[0]);
        assert!(
            requests[1].starts_with("POST /api/show "),
            "{}",
            requests[1]
        );
        assert!(
            requests[1].ends_with(r#"{"model":"gemma3:1b"}"#),
            "{}",
            requests[1]
        );
    }

    #[tokio::test]
    async fn openai_compatible_servers_list_their_models() {
        let url = serve_once(
            "200 OK",
            r#"{"object":"list","data":[{"id":"qwen","object":"model"},{"id":"llama"}]}"#,
        );
        assert_eq!(server_models(&url, None).await, ["qwen", "llama"]);
    }

    #[tokio::test]
    async fn a_server_without_props_has_no_say() {
        let url = serve_routes(Vec::new());
        assert_eq!(server_context_window(&url, "m").await, None);
    }
}
