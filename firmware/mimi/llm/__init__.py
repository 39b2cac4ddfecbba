# llm layer
