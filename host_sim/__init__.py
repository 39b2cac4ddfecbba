# Laptop-side stand-ins and fakes of the outside world (Anthropic, Telegram).
