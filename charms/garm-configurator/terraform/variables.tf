variable "app_name" {
  description = "Name of the application in the Juju model; one application per scale set."
  type        = string
  default     = "garm-configurator"
}

variable "base" {
  description = "The operating system the units run."
  type        = string
  default     = "ubuntu@24.04"
}

variable "channel" {
  description = "The Charmhub channel to deploy from."
  type        = string
  default     = "latest/edge"
}

variable "config" {
  description = "Application config (docs/reference/garm-configurator.md). Secret options take Juju secret ids; grant the secrets to the application."
  type        = map(string)
  default     = {}
}

variable "constraints" {
  description = "Juju constraints of the units, e.g. \"cores=2 mem=4G\"; null for the model's defaults (an empty string can fail on apply)."
  type        = string
  default     = null
}

variable "model_uuid" {
  description = "UUID of the Juju model to deploy in."
  type        = string
}

variable "revision" {
  description = "Charm revision; null for the channel's latest."
  type        = number
  default     = null
}

variable "units" {
  description = "Number of units; the leader publishes, one is enough."
  type        = number
  default     = 1
}
