"""The no-op handler of the throughput benchmark."""

import jobd

handlers = jobd.Handlers()


@handlers.handler("noop")
async def noop(task: jobd.Task) -> None:
    return None
