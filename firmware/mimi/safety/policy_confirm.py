# Asking the chat before a tool set to `confirm` runs (imported at the first such call).
from mimi.channels.system import requesting_chat
from mimi.safety import confirm
from mimi.safety.policy import shown_input


async def ask(policy, turn, name, data, tier):
    """None when the chat approved the call, else why it was not run."""
    app = policy.app
    channel_name, chat_id = requesting_chat(turn)
    channel = app.channels.get(channel_name)
    ask_chat = getattr(channel, "confirm", None)
    if ask_chat is None:
        return "{} needs the user's confirmation, but the {} chat cannot ask; it was not run".format(
            name, channel_name)
    meta = turn.get("meta") if isinstance(turn.get("meta"), dict) else {}
    asker = meta.get("user_id") if turn.get("channel") == "telegram" else None
    if policy.questions is None:
        policy.questions = confirm.Questions()
    question = policy.questions.ask(name, shown_input(app.config, data), channel_name, chat_id, asker, tier)
    if question is None:
        return "{} was not run: too many confirmation questions are open; try again later".format(name)
    seconds = app.config.get("safety_config", "confirm_s")
    try:
        outcome = await ask_chat(question, seconds)
    except Exception as exc:  # a question that cannot be asked is a no
        print("policy: could not ask about {}: {}".format(name, exc))
        outcome = confirm.DENIED
    finally:
        policy.questions.close(question)
    print("policy: {} {} in {}:{}".format(name, outcome, channel_name, chat_id))
    if outcome == confirm.APPROVED:
        return None
    if outcome == confirm.DENIED:
        return "the user denied running {}; it was not run".format(name)
    return "nobody approved {} within {} s; it was not run".format(name, seconds)
