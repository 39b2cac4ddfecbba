# safety layer: circuit breakers on repeated acting tool calls, and the tool-call audit log
