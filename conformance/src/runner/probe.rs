//! The probe child seen through the wire: input lines sent as ROUTE_INPUT pastes, and its
//! `PROBE <seq> <body>` reports found in a terminal's output.

use phux_proto::notation::Value;

use super::case::{Case, StepError};

impl Case {
    pub(super) fn probe_send(
        &mut self,
        conn: &str,
        terminal: &Value,
        line: &str,
    ) -> Result<(), StepError> {
        let request_id = self.next_request;
        self.next_request += 1;
        let mut data = line.as_bytes().to_vec();
        data.push(b'\r');
        let frame = Value::record(
            "COMMAND",
            vec![
                ("request_id".into(), Value::Int(request_id.into())),
                (
                    "command".into(),
                    Value::record(
                        "ROUTE_INPUT",
                        vec![
                            ("terminal".into(), terminal.clone()),
                            (
                                "event".into(),
                                Value::record(
                                    "PASTE",
                                    vec![
                                        ("trust".into(), Value::ident("trusted")),
                                        ("data".into(), Value::Str(data)),
                                    ],
                                ),
                            ),
                        ],
                    ),
                ),
            ],
        );
        self.send(conn, &frame)?;
        let ok = Value::parse(&format!(
            "COMMAND_RESULT{{request_id={request_id} result=ok}}"
        ))
        .map_err(|e| StepError::Runner(e.to_string()))?;
        self.expect(conn, &ok, self.timeout, false)
    }
}
