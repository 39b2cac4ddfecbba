# Voice's share of the day's usage: seconds of voice notes heard and characters spoken, each with its own
# daily limit (safety_config.day_audio_s, day_tts_chars), counted in the budget's usage store.
from mimi.safety.budget import NS

_LIMITS = (("day_audio_s", "seconds of voice notes"), ("day_tts_chars", "characters spoken"))


def refusal(budget, seconds, chars):
    """Why a voice note may not be transcribed (seconds) or a reply spoken (chars) today, or None."""
    if budget is None:
        return None
    budget.store.roll()
    for used, more, (key, what) in zip(budget.store.voice_today, (seconds, chars), _LIMITS):
        cap = budget.setting(key)
        if more and 0 < cap < used + more:
            return ("Today's {} are used up ({} of {}); the owner can raise the limit with config_set {}.{} "
                    "<n>.".format(what, used, cap, NS, key))
    return None


def spent(budget, seconds, chars):
    """Count what a speech service was sent; written with the token counts."""
    if budget is None:
        return
    budget.store.roll()
    budget.store.add_voice(seconds, chars)
    budget.save_soon()
